// Package gittest makes real git repositories for tests with the system
// git, isolated from the machine's configuration (no system or global
// config, a fresh HOME, fixed author, committer and dates), so object ids
// are deterministic. It is imported only from tests.
package gittest
