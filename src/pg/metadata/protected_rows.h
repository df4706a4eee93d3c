// The one gate to a protected table's stored rows outside the lookup aggregates: synthetic releases,
// median sessions, attribute releases and explain's public row count read rows only through it.
#pragma once

#include "pg/metadata/catalog.h"

namespace dxpriv::pg {

// Refuses (0A000, with a hint naming the unit and the dx aggregates) a row-by-row read of relid by
// `entry` (e.g. "dx.release_mwem") when the table has a privacy unit: these mechanisms count every
// stored row as one record and do not bound a unit's contribution with the unit metric. Returns
// normally for a table without a unit (or not protected: the caller reports that). Called by
// ProtectedRowRead and by charge_release, so that a release is refused before anything is charged.
void require_row_level_table(Oid relid, const char *entry);

// The condition of require_row_level_table, without an error.
bool row_level_table(Oid relid);

// RAII: SPI connected as relid's owner with dxpriv's hooks off (InternalSpi), opened only after
// require_row_level_table(relid, entry). 42P01 when the table no longer exists. Every read of a
// protected table's rows outside the lookup aggregates goes through one of these.
class ProtectedRowRead {
public:
	ProtectedRowRead(Oid relid, const char *entry);
	ProtectedRowRead(const ProtectedRowRead &) = delete;
	ProtectedRowRead &operator=(const ProtectedRowRead &) = delete;

	InternalSpi &spi() { return spi_; }

private:
	InternalSpi spi_;
};

} // namespace dxpriv::pg
