// Tables named by a declaration ("table" of matrix/graph metrics, "points_table" of groups): read
// once as the calling role after the checks of declaration_source.cpp, their rows copied.
#pragma once

extern "C" {
#include "postgres.h"
}

extern "C" {
#include "utils/jsonb.h"
}

#include <string>
#include <vector>

namespace dxpriv::pg {

// Set while dx._validate_column / dx._validate_group check a new declaration: the tables it names
// ("table", "points_table") are read once, as the calling role and after the checks of
// policy.cpp (no dx, system or protected table, SELECT privilege), and their rows are copied here
// as JSON arrays, so that the stored declaration holds the rows instead of the table's name.
// nullptr otherwise: a stored declaration that names a table is refused, never read.
struct DeclarationCopy {
	std::string metric_key;  // "edges" or "pairs" when the metric was read from a table
	std::string metric_rows; // JSON array of [a, b, number]
	std::string points_rows; // JSON array of coordinate arrays when the domain was read from a table
};
extern DeclarationCopy *declaration_copy;
// One (label, label, number) entry of a matrix or graph metric; row: its row in the table the
// metric was read from (1-based), 0 when it was written in the declaration.
struct Triple {
	std::string a, b;
	double d;
	size_t row;
};

// The first `columns` columns of every row of a table named by a declaration, as text, ordered by
// those columns; raises unless the calling role may read it and it is neither protected, nor
// shares rows with a protected table, nor one of dx's or the system's tables. Only while
// declaration_copy is set (dx._validate_column / dx._validate_group); the rows are recorded there.
std::vector<std::vector<std::string>> read_declaration_table(const std::string &table, size_t columns, const char *what);
// A finite number written in a table cell (inf/-inf when allow_inf), or false.
bool parse_cell(const std::string &text, double &out, bool allow_inf);
// A double as JSON (+-Infinity as the strings the metric readers accept).
std::string json_number(double x);
// Triples from a JSON array of 3-element arrays (j[key]) or from the first three columns of a table.
std::vector<Triple> read_triples(Jsonb *j, const char *key, const char *what);

} // namespace dxpriv::pg
