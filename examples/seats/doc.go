// Command seats shows kernel.ExecuteSeated: one logical agent continued
// across two subscriptions. The profile's seat chain names a first
// stage (any eligible account) and a second (one pinned account); the
// first provider's account owner refuses for quota, so the run continues
// on the second, authored stage under the same run id and deadline — and
// the record names both stages and why it moved on. Each provider
// receives its stage's credential request (the selector, never a
// credential) on create and on the turn.
//
//	go run ./examples/seats
package main
