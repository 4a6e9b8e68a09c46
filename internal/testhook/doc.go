// Package testhook holds settings with which the tests of one package
// change how another behaves at sizes no test reaches: for example the
// number of quiet keys a window operator forgets at once, 65 536 in
// production, which a pipeline test sets to a handful to see keys
// forgotten across checkpoints and crashes; or a function called where
// work runs on a goroutine no test controls, such as a checkpoint's
// encoder, which a test holds in the middle of a key. Production code
// only reads them, and their zero values mean "as in production".
package testhook
