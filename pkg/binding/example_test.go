package binding_test

import (
	"fmt"

	"github.com/langbot-nats/plugins/pkg/binding"
)

func ExampleParseScope() {
	s, err := binding.ParseScope("inst-1.ws-1.inst-uuid-1")
	fmt.Println(s.Installation(), err)
	_, err = binding.ParseScope("inst-1.*.x")
	fmt.Println(err != nil)
	// Output:
	// inst-uuid-1 <nil>
	// true
}

func ExampleBinding_Compare() {
	old := binding.Binding{PlacementGeneration: 1, RuntimeRevision: 4}
	cur := binding.Binding{PlacementGeneration: 1, RuntimeRevision: 5}
	fmt.Println(old.Compare(cur), cur.Compare(old), cur.Compare(cur))
	// Output: -1 1 0
}
