// Small readers of the JSON (jsonb) objects of column declarations; every failure raises UserError.
#pragma once

extern "C" {
#include "postgres.h"
}


extern "C" {
#include "utils/jsonb.h"
}

#include <initializer_list>
#include <string>

namespace dxpriv::pg {

// The hints of refused domain and metric declarations (the accepted spellings).
extern const char *kDomainHint;
extern const char *kMetricHint;

// Fails unless j is a JSON object whose keys are all in allowed.
void require_object_with_keys(Jsonb *j, const char *what, std::initializer_list<const char *> allowed, const char *hint);
// Looks up key in object j.
bool get_key(Jsonb *j, const char *key, JsonbValue &out);
// A JSON number (or the strings "inf"/"Infinity" when allow_inf) as a double.
double as_number(const JsonbValue &v, const std::string &what, bool allow_inf, const char *hint);
// A JSON scalar rendered as the text a type input function accepts.
std::string as_label(const JsonbValue &v, const char *hint);

} // namespace dxpriv::pg
