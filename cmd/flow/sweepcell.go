package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// sweepCell is what a sweep says of one of its cells, as sweep.json keeps
// it: a run can succeed and its cell still fail, when the sweep's score
// says no.
type sweepCell struct {
	Index      int    `json:"index"`
	Assignment string `json:"assignment"`
	Task       string `json:"task"`
	Repeat     int    `json:"repeat"`
	Run        string `json:"run"`
	Status     string `json:"status"`
	Outcome    *struct {
		Score   float64 `json:"score"`
		Failure string  `json:"failure,omitempty"`
		Message string  `json:"message,omitempty"`
	} `json:"outcome,omitempty"`
}

// cellOf finds the cell a run directory is, when it is one
// (<sweep>/cells/<run>, beside <sweep>/sweep.json), or nil.
func cellOf(dir string) *sweepCell {
	cells := filepath.Dir(dir)
	if filepath.Base(cells) != "cells" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(cells), "sweep.json"))
	if err != nil {
		return nil
	}
	var f struct {
		ID    string      `json:"id"`
		Cells []sweepCell `json:"cells"`
	}
	if json.Unmarshal(b, &f) != nil {
		return nil
	}
	for i := range f.Cells {
		if f.Cells[i].Run == filepath.Base(dir) {
			return &f.Cells[i]
		}
	}
	return nil
}

// cellLine says how the sweep counted the cell: "" when it is no cell.
func cellLine(c *sweepCell) string {
	if c == nil {
		return ""
	}
	line := fmt.Sprintf("sweep cell %d (%s, task %s, repeat %d): %s", c.Index, c.Assignment, c.Task, c.Repeat, c.Status)
	if o := c.Outcome; o != nil && o.Failure != "" {
		line += fmt.Sprintf(" — %s: %s", o.Failure, o.Message)
	}
	return line
}
