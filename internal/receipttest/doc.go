// Package receipttest builds complete, consistent candidate receipt
// chains for tests — a bundle, a benchmark task, the materialization
// receipt, the run receipt and the execution evidence, every digest
// recomputed and every referenced artifact stored in a content-addressed
// directory — from reference vector inputs, so tests can break one rule
// at a time. It is imported only from tests.
package receipttest
