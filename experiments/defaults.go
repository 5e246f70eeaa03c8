package experiments

import "strings"

// DefaultsTOML is the default spec with every key's documentation, the text
// `memo config --defaults` prints.
func DefaultsTOML() (string, error) {
	s := Default()
	s.Name = "my-experiment"
	propagateSeed(s, nil)
	return renderTOML(s, keyDocs)
}

// Render is the resolved spec with every key's documentation.
func (s *Spec) Render() (string, error) {
	if table, _ := s.raw["model"].(map[string]any); strings.HasPrefix(s.Model.InitFrom, "hf:") && table["preset"] == nil {
		// The default preset does not apply to an imported model, and
		// printed, it read back as a preset set beside model.init_from.
		// (config.toml keeps it: a run's hash must not move.)
		c := *s
		c.Model.Preset = ""
		return renderTOML(&c, keyDocs)
	}
	return renderTOML(s, keyDocs)
}

// KeyDoc is the comment of a spec key ("extract.top_k") in its Config
// struct, "" for a key without one: the help text of commands that take
// the key as a flag.
func KeyDoc(key string) string { return keyDocs[key] }
