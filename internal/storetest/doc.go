// Package storetest runs a test on each of agentrt's real run stores,
// embedded SQLite and PostgreSQL, each a fresh database that every
// opener call reaches through a new connection, as another process
// would. The PostgreSQL case skips without AGENTRT_TEST_DATABASE_URL and
// fails with AGENTRT_REQUIRE_POSTGRES=1 (see internal/pgtest), so CI
// cannot pass by skipping it. Test code only.
package storetest
