// Package storetest holds the contract cases every store.Store adapter
// must pass. An adapter's own test calls Run with a constructor for fresh,
// empty stores.
package storetest
