// Command flow runs declarative YAML flows over coding-agent subagents.
package main

import "os"

func main() { os.Exit(Main(os.Args[1:])) }
