// Package procguard ties a child process group's life to the process
// that started it, so that a supervisor killed outright (SIGKILL, OOM)
// leaves none of what it started running: harness CLIs calling their
// models unmetered, check commands judging beside a resumed run's own.
// It imports only the standard library.
package procguard
