// Package conversationtest holds the contract cases every
// conversation.Journal adapter must pass (runtime spec §4, checklist
// RES-04). An adapter's own test calls Run with a constructor for fresh,
// empty journals.
package conversationtest
