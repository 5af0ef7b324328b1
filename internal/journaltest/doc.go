// Package journaltest cuts a supervised run's spawn journal short, as
// the process writing it would have left it had it been killed right
// after one append was durable, so that crash-and-resume tests of
// supervise, graph and the fleet executor name one moment the same way.
// Test code only.
package journaltest
