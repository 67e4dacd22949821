package main

import "os"

func main() { os.Exit(Main(os.Args[1:])) }
