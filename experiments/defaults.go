package experiments

// DefaultsTOML is the default spec with every key's documentation, the text
// `memo config --defaults` prints.
func DefaultsTOML() (string, error) {
	s := Default()
	s.Name = "my-experiment"
	propagateSeed(s, nil)
	return renderTOML(s, keyDocs)
}

// Render is the resolved spec with every key's documentation.
func (s *Spec) Render() (string, error) { return renderTOML(s, keyDocs) }

// KeyDoc is the comment of a spec key ("extract.top_k") in its Config
// struct, "" for a key without one: the help text of commands that take
// the key as a flag.
func KeyDoc(key string) string { return keyDocs[key] }
