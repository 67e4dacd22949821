// Package schema is the flow language: the document types of flow files and
// agent files, decoded from the YAML AST so that every value keeps its
// file:line:col, the type expressions of inputs and typed outputs, the
// closed sets (node kinds, failure kinds), the Diagnostic that every load
// error is reported as, and the JSON Schema for editors. A driver is only a
// name here: which drivers exist is the program's to say (flows checks).
//
// Decoding never stops at the first problem: ParseFlow and ParseAgentFile
// return the document as far as it could be read together with every
// diagnostic, so `flow validate` can print all faults at once. Unknown keys
// are rejected with a "did you mean". Documents are plain data: once
// returned they are not modified and may be read from many goroutines.
//
// Reading is bounded (Limits: the file's size, its nesting, its nodes with
// aliases expanded), checked before the YAML parser sees the text and on
// the tree it returns, so a hostile file is a diagnostic within a second.
// Aliases are resolved and merge keys applied before decoding; decoders
// never meet an alias.
//
// schema imports nothing else of flow; flows, engine, steps and cmd build on
// it.
package schema
