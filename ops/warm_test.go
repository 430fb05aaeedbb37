package ops

import "testing"

// TestWarmJobsShards: the shards of WarmAll partition its kernels (each
// kernel in exactly one shard, from the same module), on each generation
// of GPU; a Hopper loads every kernel, a Volta none of the compute_90
// ones.
func TestWarmJobsShards(t *testing.T) {
	for _, major := range []int{7, 8, 9} {
		all := warmJobs(major, false, WarmOptions{})
		want := map[string]string{}
		for _, j := range all {
			want[j.name] = j.module
		}
		if len(want) != len(all) {
			t.Fatalf("major %d: a kernel is listed twice", major)
		}
		for _, shards := range []int{2, 3, 16, len(kernelTable) + 5} {
			got := map[string]string{}
			for s := 0; s < shards; s++ {
				for _, j := range warmJobs(major, false, WarmOptions{Shard: s, Shards: shards}) {
					if _, dup := got[j.name]; dup {
						t.Errorf("major %d, %d shards: %s in two shards", major, shards, j.name)
					}
					got[j.name] = j.module
				}
			}
			if len(got) != len(want) {
				t.Errorf("major %d, %d shards: %d kernels, want %d", major, shards, len(got), len(want))
			}
			for name, mod := range want {
				if got[name] != mod {
					t.Errorf("major %d, %d shards: %s from %q, want %q", major, shards, name, got[name], mod)
				}
			}
		}
	}
	if n, total := len(warmJobs(9, false, WarmOptions{})), len(kernelTable); n != total {
		t.Errorf("compute capability 9: %d kernels of %d", n, total)
	}
	for _, j := range warmJobs(7, false, WarmOptions{}) {
		if j.module == "reduce_sm90" || j.module == "binary_sm80" {
			t.Errorf("compute capability 7 loads %s from %s", j.name, j.module)
		}
	}
}
