package main

import "github.com/spf13/cobra"

func newDemoCommand() *cobra.Command {
	return &cobra.Command{Use: "demo", Hidden: true}
}
