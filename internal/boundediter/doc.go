// Package boundediter reads a stream it does not trust to end: a
// producer's iter.Seq2 that may ignore its context, block forever, or
// panic. Seq2 runs the producer in its own goroutine and hands its items
// over, so that the reader stops waiting a bounded grace after its
// context ends, and a panic in the producer becomes an error the reader
// sees (*PanicError) instead of a crash of the reader's goroutine.
//
// It is for the runtime's front doors that promise their caller an end
// (taskstream's final event, chatturn's session.run.failed line) over a
// producer the caller wrote.
package boundediter
