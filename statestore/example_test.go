package statestore_test

import (
	"fmt"

	"github.com/volga-go/volga/statestore"
)

func ExampleMemory() {
	s := statestore.NewMemory()
	defer s.Close()
	_ = s.Set([]byte("user/2"), []byte("b"))
	_ = s.Set([]byte("user/1"), []byte("a"))
	_ = s.Set([]byte("merchant/9"), []byte("m"))
	_ = s.Scan([]byte("user/"), func(k, v []byte) error {
		fmt.Printf("%s=%s\n", k, v)
		return nil
	})
	// Output:
	// user/1=a
	// user/2=b
}
