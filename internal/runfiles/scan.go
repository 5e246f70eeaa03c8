package runfiles

// ScanRow is one row of a scan file (`memo extract --scan`): whether
// greedy decoding of one document's prefix reproduces its true suffix,
// decided by one teacher-forced pass (engine.GreedyMatch) rather than by
// generating. MatchedLen is the number of leading suffix tokens greedy
// decoding reproduces (0 … SuffixLen); ExactMatch is MatchedLen ==
// SuffixLen, the exact_match of completions.arrow's greedy attack.
// Margin is how near that verdict came to another, in logits
// (engine.Match: 0 is a tie, where generation's arithmetic may decide
// otherwise); NaN for a document not scanned, and in files written before
// memo recorded it. Status is "ok", or why the document was not scanned ("too_short"; then
// the lengths are 0 and ExactMatch false).
type ScanRow struct {
	DocID       int64   `arrow:"doc_id,required"`
	Split       string  `arrow:"split,required"`
	Status      string  `arrow:"status,required"`
	Repetitions int     `arrow:"repetitions"`
	PrefixLen   int     `arrow:"prefix_len,required"`
	SuffixLen   int     `arrow:"suffix_len,required"`
	MatchedLen  int     `arrow:"matched_len,required"`
	ExactMatch  bool    `arrow:"exact_match,required"`
	Margin      float32 `arrow:"margin"`
}

// Scans is the scan file's codec (Parquet).
var Scans = NewTable[ScanRow]("scan.parquet")

// ScanSuffix ends a scan file's name.
const ScanSuffix = ".scan.parquet"
