package canonjson

import "unsafe"

// SetPairwiseMembers sets the duplicate-check crossover for a benchmark
// and returns the previous value.
func SetPairwiseMembers(n int) int {
	old := pairwiseMembers
	pairwiseMembers = n
	return old
}

// NameChecks decodes data and returns how many member-name comparisons
// and lookups the duplicate check made.
func NameChecks(data []byte) (int, error) {
	d := decoder{data: data, src: string(data), opts: DecodeOptions{MaxDepth: DefaultMaxDepth, MaxValues: DefaultMaxValues}}
	d.skipSpace()
	_, err := d.value(0)
	return d.nameChecks, err
}

// ValueSize is the size of a Value in bytes.
const ValueSize = unsafe.Sizeof(Value{})
