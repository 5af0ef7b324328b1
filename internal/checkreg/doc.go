// Package checkreg is the one registry behind `agentrt check`: every
// contract kind agentrt implements (from each contract package's Kinds) and
// every contract function the conformance vectors exercise, with the JSON
// glue that calls them. Other issues extend it by adding their packages'
// kinds and functions here.
package checkreg
