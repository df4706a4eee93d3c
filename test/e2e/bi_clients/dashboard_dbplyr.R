# The dashboard through dbplyr on RPostgreSQL (Debian r-cran-dbplyr, r-cran-rpostgresql), as an analyst.
# Driven by test_bi_clients.py: env PGPORT, DB, DBUSER. Prints one line per shape (see there).
# dbplyr writes values into the SQL as literals; the bound-parameter shape uses DBI's params
# (RPostgreSQL sends them with PQexecParams: $1 bound on the server). RPostgreSQL does not expose
# SQLSTATEs: an error line carries "none" and the SQL dbplyr rendered, which the test replays.
suppressPackageStartupMessages({
  library(DBI)
  library(dplyr)
  library(dbplyr)
  library(RPostgreSQL)
})
options(dbplyr_use_colour = FALSE, warn = -1)
con <- dbConnect(PostgreSQL(), host = "127.0.0.1", port = as.integer(Sys.getenv("PGPORT")),
                 user = Sys.getenv("DBUSER"), dbname = Sys.getenv("DB"))

clean <- function(s) gsub("[\t\n]+", " ", paste(s, collapse = " "))
spent <- function() as.numeric(dbGetQuery(con, "SELECT spent FROM dx.budgets WHERE \"table\" = 'visits'::regclass")$spent)

shape <- function(name, run, sql = "") {
  before <- spent()
  res <- tryCatch({
    df <- as.data.frame(run())
    charged <- spent() - before
    keys <- if (ncol(df) > 0) as.character(df[[1]]) else character(0)
    values <- if (ncol(df) > 1) format(df[[ncol(df)]], digits = 15, trim = TRUE) else character(0)
    cat(paste("shape", name, "ok", charged, nrow(df), paste(keys, collapse = ";"), paste(values, collapse = ";"),
              sep = "\t"), "\n", sep = "")
    df
  }, error = function(e) {
    cat(paste("shape", name, "error", spent() - before, "none", clean(conditionMessage(e)), clean(sql), sep = "\t"),
        "\n", sep = "")
    NULL
  })
  invisible(res)
}
rendered <- function(q) tryCatch(as.character(sql_render(q)), error = function(e) "")

# tbl() asks for the column list with SELECT * FROM "visits" AS "q01" WHERE (0 = 1)
visits <- NULL
shape("probe_tbl", function() {
  visits <<- tbl(con, "visits")
  data.frame(column = colnames(visits))
}, "SELECT * FROM \"visits\" WHERE (0 = 1)")
if (is.null(visits)) visits <- tbl(con, "visits", vars = c("id", "day", "age", "channel", "amount"))

monthly <- visits %>%
  filter(day >= as.Date("2024-01-01"), day <= as.Date("2024-12-31")) %>%
  group_by(month = date_trunc("month", day)) %>%
  summarise(avg_amount = mean(amount, na.rm = TRUE), n = n()) %>%
  arrange(month)
shape("monthly", function() collect(monthly), rendered(monthly))

# DBI parameter binding (dbplyr has no bound parameters)
# (with params, RPostgreSQL only warns on a server error and returns NULL: the error is in dbGetException)
shape("count_filtered", function() {
  r <- dbGetQuery(con, "SELECT count(*) AS n FROM visits WHERE age >= $1", params = list(40L))
  if (is.null(r)) stop(dbGetException(con)$errorMsg)
  r
},
      "SELECT count(*) AS n FROM visits WHERE age >= $1")
age_from <- 40L
filtered <- visits %>% filter(age >= !!age_from) %>% count()
shape("count_filtered_dbplyr", function() collect(filtered), rendered(filtered))

pct <- visits %>% count(channel) %>% mutate(pct = 100 * n / sum(n, na.rm = TRUE)) %>% select(channel, pct)
shape("pct_of_total", function() collect(pct), rendered(pct))

top <- visits %>% count(channel, sort = TRUE) %>% head(10)
shape("top10", function() collect(top), rendered(top))

# a filter drop-down (the declared values, no charge) and "the last 30 days" (lubridate's today() is CURRENT_DATE)
dropdown <- visits %>% distinct(channel)
shape("dropdown", function() collect(dropdown), rendered(dropdown))
last30 <- visits %>% filter(day >= today() - 30L) %>% count(channel)
shape("last_30_days", function() collect(last30), rendered(last30))

raw <- visits %>% filter(channel == "web")
shape("attack_raw", function() collect(raw), rendered(raw))

invisible(dbDisconnect(con))
