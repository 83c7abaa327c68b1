#include "contract/contract.h"

#define DSF_RECORD(n) extern const dsf_record dsf_rec_##n;
#include "kern/records.def"
#undef DSF_RECORD

#define DSF_RECORD(n) &dsf_rec_##n,
static const dsf_record *const records[] = {
#include "kern/records.def"
    NULL,
};
#undef DSF_RECORD

size_t dsf_contract_record_count(void) { return sizeof records / sizeof records[0] - 1; }

const dsf_record *dsf_contract_record(size_t i) { return i < dsf_contract_record_count() ? records[i] : NULL; }
