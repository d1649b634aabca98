/** The benchmarks' deterministic PRNG is the one the shipped evaluations use. */
export { Prng } from '../../src/util/prng.js';
