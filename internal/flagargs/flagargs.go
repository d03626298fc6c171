// Package flagargs parses command lines whose flags may come before and
// after the positional arguments, as etcdctl takes them (`save FILE --addr
// A`), for fenced's subcommands.
package flagargs

import "flag"

// Parse parses fs's flags wherever they stand in args and returns the
// positional arguments, in order.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
