package conformance

import "fmt"

// ValidationError reports a document that does not have the shape its
// schema requires. Pointer is the RFC 6901 JSON pointer of the offending
// value inside Document.
type ValidationError struct {
	// Document names what was being read ("capabilities", "manifest",
	// "cohort report", "cohort pins").
	Document string
	// Pointer locates the offending value ("" is the whole document).
	Pointer string
	// Reason says what was wrong.
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("%s: invalid at %q: %s", e.Document, e.Pointer, e.Reason)
}

// Problem is one failed verification check. Verification collects every
// problem instead of stopping at the first.
type Problem struct {
	// Check names the §8 check that failed: "schema", "digest",
	// "capability", "archive", "cohort", "source" or "require".
	Check string
	// Pointer locates the manifest value the problem is about, when there
	// is one.
	Pointer string
	// Message says what was recomputed and how it disagreed.
	Message string
}

func (p Problem) Error() string {
	if p.Pointer == "" {
		return p.Check + ": " + p.Message
	}
	return fmt.Sprintf("%s: %s: %s", p.Check, p.Pointer, p.Message)
}

// ArchiveError reports a module zip that is not a well-formed archive of
// one module version.
type ArchiveError struct {
	// Entry is the zip entry at fault, when there is one.
	Entry  string
	Reason string
}

func (e *ArchiveError) Error() string {
	if e.Entry == "" {
		return "module archive: " + e.Reason
	}
	return fmt.Sprintf("module archive: %s: %s", e.Entry, e.Reason)
}

// CohortMismatchError reports a cohort report that disagrees with the
// pinned release cohort (CM-08).
type CohortMismatchError struct {
	// Module is the pinned module path.
	Module string
	// Reason says how the report disagreed.
	Reason string
}

func (e *CohortMismatchError) Error() string {
	return fmt.Sprintf("cohort: %s: %s", e.Module, e.Reason)
}

// RunError reports that the test run produced no report at all. A run
// whose tests fail is evidence, not an error.
type RunError struct {
	Reason string
	Err    error
}

func (e *RunError) Error() string {
	if e.Err == nil {
		return "go test: " + e.Reason
	}
	return fmt.Sprintf("go test: %s: %v", e.Reason, e.Err)
}

func (e *RunError) Unwrap() error { return e.Err }
