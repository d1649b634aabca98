import { addOuterUpper, mirrorUpper, symmetricEigen } from './linear-algebra.js';
import { Vocabulary } from './vocabulary.js';
import type { WinkRowSink, WinkVocabulary } from './wink-json-reader.js';

/** Where the word vectors came from; a cache built from anything else is rebuilt. */
export interface GloveSource {
  package: string;
  version: string;
  /** Size of the package's JSON file: a repackaged file under the same version still invalidates the cache. */
  fileBytes: number;
}

/**
 * Everything the sentence encoder needs, as stored in the binary cache: the vocabulary, the word vectors
 * quantised to int8 (one scale per row), and statistics computed once from them.
 */
export interface GloveTables {
  source: GloveSource;
  dimensions: number;
  /** Words by row, most frequent first (the package's order, which is GloVe's by frequency), and their rows. */
  vocabulary: Vocabulary;
  /** Row `i` is `matrix[i*dims .. (i+1)*dims] * scales[i]`. */
  scales: Float32Array;
  matrix: Int8Array;
  /**
   * Row `r` of {@link matrix} (`dimensions` int8 values), when the tables serve rows without the whole matrix in
   * memory (a cache opened lazily, glove-cache-file.ts: the frequent words' rows read at start, others on first use;
   * reading `matrix` then loads it all). Absent: rows are views of `matrix`. See {@link matrixRow}.
   */
  row?(r: number): Int8Array;
  /** Mean of the {@link PCA_WORDS} most frequent word vectors. */
  mean: Float32Array;
  /** The top {@link STORED_COMPONENTS} principal directions of those vectors, centred: rows of `dimensions`. */
  components: Float32Array;
}

/** Row `r` of the tables' matrix: {@link GloveTables.row} when they have it, else a view of the matrix. */
export function matrixRow(tables: GloveTables, r: number): Int8Array {
  return tables.row ? tables.row(r) : tables.matrix.subarray(r * tables.dimensions, (r + 1) * tables.dimensions);
}

/**
 * Words used for the word-vector mean and principal components. The 50K most frequent cover all but the
 * rarest words of ordinary text; the tail of GloVe's 400K (typos, rare names) has noisier vectors.
 */
export const PCA_WORDS = 50_000;
/** Principal directions stored; the encoder removes its configured number of them (all-but-the-top). */
export const STORED_COMPONENTS = 8;

/**
 * Quantises rows to int8 as they stream in, with a per-row scale (max |x| -> 127): the 136 MB float matrix
 * never exists, the int8 one takes 34 MB, and the cosine between a word's float and int8 vector measured
 * >= 0.9999 (mean 0.99998) over the whole vocabulary.
 */
export class RowQuantizer implements WinkRowSink {
  matrix = new Int8Array(0);
  scales = new Float32Array(0);
  private dimensions = 0;

  start(size: number, dimensions: number): void {
    this.dimensions = dimensions;
    this.matrix = new Int8Array(size * dimensions);
    this.scales = new Float32Array(size);
  }

  row(index: number, values: Float64Array): void {
    const dims = this.dimensions;
    let max = 0;
    for (let d = 0; d < dims; d++) max = Math.max(max, Math.abs(values[d]!));
    const scale = Math.fround(max / 127);
    this.scales[index] = scale;
    if (scale === 0) return;
    const base = index * dims;
    for (let d = 0; d < dims; d++) this.matrix[base + d] = Math.round(values[d]! / scale);
  }
}

/** Mean and top principal directions (centred) of the first `PCA_WORDS` rows, from the quantised vectors. */
export function wordStatistics(
  matrix: Int8Array,
  scales: Float32Array,
  dimensions: number,
): { mean: Float32Array; components: Float32Array } {
  const rows = Math.min(PCA_WORDS, scales.length);
  const mean = new Float64Array(dimensions);
  const row = new Float64Array(dimensions);
  for (let r = 0; r < rows; r++) {
    dequantizeRow(matrix, scales, dimensions, r, row);
    for (let d = 0; d < dimensions; d++) mean[d] = mean[d]! + row[d]! / rows;
  }
  const cov = new Float64Array(dimensions * dimensions);
  for (let r = 0; r < rows; r++) {
    dequantizeRow(matrix, scales, dimensions, r, row);
    for (let d = 0; d < dimensions; d++) row[d] = row[d]! - mean[d]!;
    addOuterUpper(cov, row, dimensions);
  }
  const { vectors } = symmetricEigen(mirrorUpper(cov, dimensions), dimensions);
  return { mean: Float32Array.from(mean), components: Float32Array.from(vectors.subarray(0, STORED_COMPONENTS * dimensions)) };
}

export function dequantizeRow(matrix: Int8Array, scales: Float32Array, dimensions: number, r: number, out: Float64Array): void {
  const scale = scales[r]!;
  const base = r * dimensions;
  for (let d = 0; d < dimensions; d++) out[d] = matrix[base + d]! * scale;
}

/** Tables from the package's parsed vocabulary and its quantised rows. */
export function tablesFromWink(wink: WinkVocabulary, rows: RowQuantizer, source: GloveSource): GloveTables {
  const { matrix, scales } = rows;
  const { mean, components } = wordStatistics(matrix, scales, wink.dimensions);
  return {
    source,
    dimensions: wink.dimensions,
    vocabulary: Vocabulary.build(wink.words),
    scales,
    matrix,
    mean,
    components,
  };
}
