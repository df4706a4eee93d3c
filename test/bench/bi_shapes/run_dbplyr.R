# Issue 24 shapes through R's dbplyr (Debian r-cran-dbplyr 2.3, RPostgreSQL): each shape is a dplyr
# pipeline whose SQL dbplyr generates and RPostgreSQL sends, as the analyst bw_analyst, against the
# bw/cz fixture of fixture.sql. Prints name <TAB> ok|error <TAB> detail (rows, or the error), then
# the generated SQL. Usage: Rscript run_dbplyr.R HOST PORT
suppressPackageStartupMessages({ library(DBI); library(RPostgreSQL); library(dplyr); library(dbplyr) })
args <- commandArgs(trailingOnly = TRUE)
con <- dbConnect(PostgreSQL(), host = args[1], port = as.integer(args[2]), user = "bw_analyst", dbname = "postgres")
bw <- tbl(con, "bw")
cz <- tbl(con, "cz")
shapes <- list(
  count_all = function() bw %>% count(),
  count_by_city = function() bw %>% count(city),
  summarise_group_by = function() bw %>% group_by(sex) %>% summarise(n = n(), mean_age = mean(age, na.rm = TRUE)),
  sd_by_city = function() bw %>% group_by(city) %>% summarise(sd_age = sd(age, na.rm = TRUE)),
  var_total = function() bw %>% summarise(v = var(age, na.rm = TRUE)),
  n_distinct_city = function() bw %>% summarise(cities = n_distinct(city)),
  filter_summarise = function() bw %>% filter(age >= 30) %>% group_by(city) %>% summarise(s = sum(age, na.rm = TRUE)),
  window_mutate_share = function() bw %>% count(city) %>% mutate(share = n / sum(n, na.rm = TRUE)),
  window_mutate_cumsum = function() bw %>% count(city) %>% window_order(city) %>% mutate(cum = cumsum(n)),
  join_public_summarise = function() bw %>% inner_join(cz, by = "city") %>% group_by(zone) %>% summarise(n = n()),
  join_public_sd = function() bw %>% inner_join(cz, by = "city") %>% group_by(zone) %>% summarise(sd_age = sd(age, na.rm = TRUE)),
  tally_sort = function() bw %>% count(city, sort = TRUE),
  head_rows = function() bw %>% head(5)
)
for (name in names(shapes)) {
  q <- shapes[[name]]()
  sql <- tryCatch(as.character(sql_render(q)), error = function(e) paste("render:", conditionMessage(e)))
  res <- tryCatch({ d <- collect(q); paste(nrow(d), "rows") }, error = function(e) paste("ERROR", gsub("\n", " ", conditionMessage(e))))
  status <- if (startsWith(res, "ERROR")) "error" else "ok"
  cat(name, "\t", status, "\t", substr(res, 1, 160), "\n", sep = "")
  cat("    ", gsub("\n", " ", sql), "\n", sep = "")
}
dbDisconnect(con)
