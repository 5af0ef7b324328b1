// Package pgtest gives the PostgreSQL adapters' tests a database: the URL
// from AGENTRT_TEST_DATABASE_URL and a fresh schema per test, dropped when
// the test ends, so runs never see each other's rows. Without the URL the
// tests skip with a message that says how to run them; with
// AGENTRT_REQUIRE_POSTGRES=1 (as in .ci/run) they fail instead, so CI
// cannot pass by skipping. Proxy (ProxiedSchema) stands between a test
// and the database and can black-hole or reset its connections, so a
// real pgx pool stops answering. Test code only.
package pgtest
