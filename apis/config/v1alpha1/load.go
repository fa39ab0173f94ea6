package v1alpha1

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/errors"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Load reads, defaults and validates a configuration file; an empty path yields the defaults.
// Unknown fields are errors, so a misspelt option never silently does nothing.
func Load(path string) (*OperatorConfiguration, error) {
	cfg := &OperatorConfiguration{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading configuration: %w", err)
		}
		if err := decodeStrict(data, cfg); err != nil {
			return nil, fmt.Errorf("decoding configuration %s: %w", path, err)
		}
	}
	SetDefaults(cfg)
	if errs := Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration %s: %w", path, errs.ToAggregate())
	}
	return cfg, nil
}

// decodeStrict decodes YAML and reports every unknown or duplicate field with its full path.
func decodeStrict(data []byte, cfg *OperatorConfiguration) error {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(js, cfg)
	if err != nil {
		return err
	}
	return errors.NewAggregate(strict)
}
