package statestore_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/volga-go/volga/statestore"
)

// A snapshot reads many keys as of one moment: an operator that reads
// the states of many keys while other writes stream in waits once, when
// it takes the snapshot, instead of at every Get.
func ExampleBadger_Snapshot() {
	dir, err := os.MkdirTemp("", "snapshot")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := statestore.OpenBadger(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ops := statestore.Sub(db, "op/0/1/") // one operator's view
	_ = ops.Set([]byte("k/alice"), []byte("3 rows"))

	sn, err := ops.(statestore.Snapshotter).Snapshot()
	if err != nil {
		log.Fatal(err)
	}
	defer sn.Close()
	_ = ops.Set([]byte("k/alice"), []byte("4 rows")) // after the snapshot
	_ = ops.Set([]byte("k/bob"), []byte("1 row"))

	v, _ := sn.Get([]byte("k/alice"))
	fmt.Printf("snapshot: alice=%s\n", v)
	if _, err := sn.Get([]byte("k/bob")); errors.Is(err, statestore.ErrNotFound) {
		fmt.Println("snapshot: bob not found")
	}
	v, _ = ops.Get([]byte("k/alice"))
	fmt.Printf("store: alice=%s\n", v)
	// Output:
	// snapshot: alice=3 rows
	// snapshot: bob not found
	// store: alice=4 rows
}
