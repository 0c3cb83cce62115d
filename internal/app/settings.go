package app

import (
	"flag"
	"os"
	"slices"
	"strings"

	"seatflow/internal/cli"
)

// parseSettings gives every setting of all its value from the SEATFLOW_* variable of the
// same name (an empty variable counts as unset), then parses args with the settings named
// in keys (every one when keys is nil) and the flags own adds: a flag beats the
// environment. A variable that does not parse fails exactly as the flag would, naming the
// variable, instead of being ignored; so does a value a setting's check refuses
// (settingChecks).
func parseSettings(all *flag.FlagSet, keys []string, own func(*flag.FlagSet), args []string) ([]string, error) {
	var err error
	all.VisitAll(func(f *flag.Flag) {
		name := envName(f.Name)
		if v := os.Getenv(name); v != "" && err == nil {
			err = cli.SetFromEnv(f, name, v)
		}
	})
	if err != nil {
		return nil, err
	}
	visible := all
	if keys != nil || own != nil {
		visible = flag.NewFlagSet(all.Name(), flag.ContinueOnError)
		all.VisitAll(func(f *flag.Flag) {
			if keys == nil || slices.Contains(keys, strings.TrimPrefix(envName(f.Name), "SEATFLOW_")) {
				visible.Var(f.Value, f.Name, f.Usage)
				visible.Lookup(f.Name).DefValue = f.DefValue
			}
		})
		if own != nil {
			own(visible)
		}
	}
	rest, err := cli.Parse(visible, args)
	if err != nil {
		return nil, err
	}
	setByFlag := map[string]bool{}
	visible.Visit(func(f *flag.Flag) { setByFlag[f.Name] = true })
	if err := checkSettings(all, setByFlag); err != nil {
		return nil, cli.UsageError{Msg: err.Error()}
	}
	return rest, nil
}

// envName is the variable of a setting's flag: -hold-ttl → SEATFLOW_HOLD_TTL.
func envName(flagName string) string {
	return "SEATFLOW_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// invalidConfig makes a configuration that parsed but cannot run a usage error: the
// command line or the environment must change.
func invalidConfig(err error) error {
	if err == nil {
		return nil
	}
	return cli.UsageError{Msg: err.Error()}
}
