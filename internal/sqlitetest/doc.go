// Package sqlitetest makes an agentrt SQLite file stop taking writes, as
// another process holding its write lock does, so that tests can show a
// store whose writes block on busy stays bounded and loses nothing.
// Test code only.
package sqlitetest
