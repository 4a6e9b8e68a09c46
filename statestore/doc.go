// Package statestore holds the keyed state of the engine's operators.
//
// A Store is an ordered key-value store with byte-slice keys and values,
// the contract every state backend implements: Memory (this package, for
// tests, batch runs and small pipelines) and, for durable state with
// checkpoints, a Badger-backed store. Keys are compared bytewise;
// Scan visits keys with a prefix in ascending order. A Store is safe for
// concurrent use.
//
// Package storetest has one conformance suite that every implementation
// runs, so that they cannot drift apart.
package statestore
