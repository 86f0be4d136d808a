#!/usr/bin/env bash
# Runs every property/fuzz target over untrusted-input parsers and the pure
# analyses a fixed number of times (not part of CI's test run):
#   bash scripts/fuzz.sh [CASES]        # default 100000 cases per target
# Prints one line per target: cases, result, seconds. A failure prints proptest's
# minimal failing input; it then gets a regression test of its own.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cases=${1:-100000}
targets=(
  "snapshot::fieldsv1::tests::decoder_is_total_on_arbitrary_json   FieldsV1 decoder (untrusted managedFields)"
  "snapshot::fieldsv1::tests::encode_then_decode_round_trips       FieldsV1 encode/decode round trip"
  "snapshot::fieldsv1::tests::decoding_text_agrees_with_decoding_a_tree   FieldsV1 read from text vs from a JSON tree"
  "analyze::selector::tests::parser_never_panics                  label selector parser (-l)"
  "analyze::selector::tests::overlap_agrees_with_brute_force_and_witnesses_hold   selector algebra vs brute force"
  "analyze::resource_ref::tests::parsing_is_total                 resource reference parser"
  "analyze::resource_ref::tests::valid_arguments_round_trip       resource reference round trip"
  "connect::duration::tests::never_panics                         duration parser"
  "analyze::lease::tests::holder_parsing_never_panics             lease holder identity parser"
  "analyze::owner_graph::tests::the_tree_prints_exactly_the_ancestors_and_descendants_once   owner tree vs reachability"
  "analyze::cascade::tests::delete_set_matches_the_naive_fixpoint   cascade prediction vs naive GC fixpoint"
  "connect::protobuf::tests::any_body_decodes_or_fails_cleanly   protobuf metadata list decoder (cut, corrupted, random bodies)"
  "connect::gzip::tests::arbitrary_bytes_never_panic            gzip inflate (libdeflate, flate2) on random bodies"
  "connect::gzip::tests::damaged_bodies_answer_as_flate2_does    gzip inflate on cut and corrupted bodies vs flate2 alone"
  "analyze::sequence_text::tests::reads_as_the_value_walk_does   trace objects read typed vs through a Value tree"
  "analyze::fields::tests::sibling_search_agrees_with_a_scan   applied-sibling search vs a scan"
  "source::audit::event::tests::any_bytes_are_read_without_panic   audit event reader (random bytes)"
  "source::audit::event::tests::changed_events_are_read_or_refused   audit event reader (real events changed, batched, wrapped)"
  "source::audit::event::tests::a_cut_event_is_invalid_not_a_wrong_request   audit event reader (events cut short)"
  "source::files::tests::any_text_is_read_or_skipped   manifest reader (-f: YAML-like text)"
  "source::files::tests::any_bytes_are_read_or_skipped   manifest reader (-f: random bytes)"
  "source::dump::tests::any_bytes_are_records_or_errors   coord dump reader (random and cut gzip bytes)"
  "source::cluster_info::tests::any_stream_is_lists_or_errors   cluster-info dump stream reader (random text)"
  "source::support_bundle::tests::any_file_text_is_pages_or_errors   support bundle reader (random text in each file it reads)"
  "analyze::history::findings::tests::sweeping_changes_no_finding   history findings: sweeping quiet objects changes nothing"
)
cargo test --locked --release --lib --no-run >/dev/null 2>&1 || { echo "build failed" >&2; exit 1; }
status=0
printf '%-100s %10s %8s %8s\n' TARGET CASES RESULT SECONDS
for t in "${targets[@]}"; do
  name=${t%% *}
  what=$(echo "${t#* }" | sed 's/^ *//')
  start=$(date +%s.%N)
  if PROPTEST_CASES=$cases cargo test --locked --release --lib -- --exact "$name" >/tmp/fuzz-$$.log 2>&1 \
      && grep -q "1 passed" /tmp/fuzz-$$.log; then
    result=ok
  else
    result=FAILED; status=1
    sed -n '/minimal failing input/,+20p' /tmp/fuzz-$$.log >&2
  fi
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  printf '%-100s %10s %8s %8s\n' "$what ($name)" "$cases" "$result" "$secs"
done
rm -f /tmp/fuzz-$$.log
exit $status
