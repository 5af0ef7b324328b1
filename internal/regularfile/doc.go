// Package regularfile owns one rule: a file agentrt reads because its
// name says what it holds — a journal, a run dir's state, a control
// request, a blob — is opened without blocking and read only when it is
// a regular file. A FIFO (or a device) put in its place would otherwise
// block the open, and whoever waits on the read, for ever.
package regularfile
