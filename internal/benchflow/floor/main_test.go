package main

import "testing"

func TestSpawn(t *testing.T) {
	tests := []struct {
		name    string
		n, k    int
		capture bool
		argv    []string
		wantErr bool
	}{
		{"none", 0, 1, false, nil, false},
		{"chain", 3, 1, false, []string{"true"}, false},
		{"wide", 10, 4, false, []string{"true"}, false},
		{"captured", 4, 2, true, []string{"echo", "hi"}, false},
		{"a chain stops at a failure", 3, 1, false, []string{"false"}, true},
		{"every failure counts", 5, 2, true, []string{"false"}, true},
		{"no such command", 2, 2, false, []string{"./no-such-command"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := spawn(tt.n, tt.k, tt.capture, tt.argv); (err != nil) != tt.wantErr {
				t.Errorf("spawn(%d, %d, %v) = %v, want error %v", tt.n, tt.k, tt.argv, err, tt.wantErr)
			}
		})
	}
}
