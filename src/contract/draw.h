#ifndef DSF_CONTRACT_DRAW_H
#define DSF_CONTRACT_DRAW_H
// Seeded input drawing for the contract: realistic ranges per element kind, never zeros, exact ties included.
#include <stdint.h>

#include "contract/contract.h"

uint64_t dsf_rng_next(uint64_t *state);
// A uniform double in [0, 1) from the generator.
double dsf_rng_unit(uint64_t *state);
// Mixes a seed with a name and an index into an independent stream seed.
uint64_t dsf_rng_seed(uint64_t seed, const char *name, uint64_t index);
// Fills `count` elements of buf for operand op (rows already folded into count).
void dsf_draw_operand(const dsf_operand *op, void *buf, int64_t count, const dsf_case *c, uint64_t *rng);

#endif
