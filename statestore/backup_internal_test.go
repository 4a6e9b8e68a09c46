package statestore

import (
	"bytes"
	"testing"

	"github.com/dgraph-io/badger/v4/pb"
	"google.golang.org/protobuf/proto"
)

// FuzzBackupKV: backupKV.appendTo encodes a key as proto.Marshal encodes
// the pb.KVList holding its pb.KV, byte for byte, and two keys appended
// one after the other as the list of both; what it writes unmarshals to
// the same fields.
func FuzzBackupKV(f *testing.F) {
	f.Add([]byte("op/0/0/k/\x01\x02"), []byte("state"), uint64(7), uint64(0), byte(0), byte(0))
	f.Add([]byte{}, []byte{}, uint64(0), uint64(0), byte(0), byte(badgerBitDelete))
	f.Add(bytes.Repeat([]byte("k"), 200), bytes.Repeat([]byte("v"), 70_000), uint64(1)<<63, uint64(1)<<40, byte(0xff), byte(1))
	f.Fuzz(func(t *testing.T, key, value []byte, version, expiresAt uint64, userMeta, meta byte) {
		kv := backupKV{key: key, value: value, version: version, expiresAt: expiresAt, userMeta: userMeta, meta: meta}
		want := func(kvs ...backupKV) []byte {
			list := &pb.KVList{}
			for _, kv := range kvs {
				list.Kv = append(list.Kv, &pb.KV{Key: kv.key, Value: kv.value, Version: kv.version, ExpiresAt: kv.expiresAt,
					UserMeta: []byte{kv.userMeta}, Meta: []byte{kv.meta}})
			}
			b, err := proto.Marshal(list)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		got := kv.appendTo(nil)
		if w := want(kv); !bytes.Equal(got, w) {
			t.Fatalf("appendTo(%+v) =\n%x\nproto.Marshal gives\n%x", kv, got, w)
		}
		other := backupKV{key: []byte("other"), version: version + 1, meta: badgerBitDelete}
		got = other.appendTo(got)
		if w := want(kv, other); !bytes.Equal(got, w) {
			t.Fatalf("two keys:\n%x\nproto.Marshal gives\n%x", got, w)
		}
		var list pb.KVList
		if err := proto.Unmarshal(got, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Kv) != 2 {
			t.Fatalf("%d keys read back", len(list.Kv))
		}
		k := list.Kv[0]
		if !bytes.Equal(k.Key, key) || !bytes.Equal(k.Value, value) || k.Version != version || k.ExpiresAt != expiresAt ||
			!bytes.Equal(k.UserMeta, []byte{userMeta}) || !bytes.Equal(k.Meta, []byte{meta}) {
			t.Fatalf("read back %v, want %+v", k, kv)
		}
	})
}
