"""The night record: several suites run on one schedule, one verdict for the night (FORMATS.md §11).

- :func:`night_verdict`: the rule (NO-GO if any suite is NO-GO; else INCONCLUSIVE if any is
  INCONCLUSIVE or failed to run; else GO), with reasons naming suite and component.
- :func:`suite_night` / :func:`failed_suite`: one suite's entry from its run folder, or from the
  error that stopped it.
- :func:`finish_night`: ``runs/nights/<date>/night.json`` (every record of the date kept in
  ``records/``, :func:`kept_records`) and ``night.html``, the MLflow run of the
  night, and its one notification; :func:`find_record` / :func:`read_record` /
  :func:`night_lines` read it back (``omnieval night``).
- :func:`team_night` / :func:`combine_nights`: with a shared tracking server, the night of every
  machine that logged one, as one record (:func:`combined_document`, :func:`team_lines`).

Running the suites is the night flow's job (``omnieval.flows.night``); this package only reads
their run folders and writes what the night leaves behind (docs/nightly.md, "The night record").
"""

from omnieval.night._finish import NightOutcome, finish_night, night_metrics
from omnieval.night._notify import night_lines, night_message, notify_night, subject_line, union_notifiers
from omnieval.night._page import night_page, what_moved, write_night_page
from omnieval.night._record import (
    FAILED,
    NIGHT_FILE,
    NIGHT_PAGE,
    NIGHTS_FOLDER,
    RECORDS_FOLDER,
    Decider,
    NightRecord,
    NightUsage,
    NightVerdict,
    SuiteNight,
    UsageTotal,
    build_record,
    check_date,
    deciders,
    failed_suite,
    find_record,
    kept_records,
    mde_max,
    night_folder,
    night_usage,
    night_verdict,
    read_record,
    record_document,
    suite_night,
    suite_usage,
    sum_usage,
    write_record,
)
from omnieval.night._team import (
    MACHINES_KEY,
    CombinedNight,
    MachineNight,
    ServerUnreachable,
    combine_nights,
    combined_document,
    server_reachable,
    team_lines,
    team_night,
)

__all__ = [
    "FAILED",
    "MACHINES_KEY",
    "NIGHTS_FOLDER",
    "NIGHT_FILE",
    "NIGHT_PAGE",
    "RECORDS_FOLDER",
    "CombinedNight",
    "Decider",
    "MachineNight",
    "NightOutcome",
    "NightRecord",
    "NightUsage",
    "NightVerdict",
    "ServerUnreachable",
    "SuiteNight",
    "UsageTotal",
    "build_record",
    "check_date",
    "combine_nights",
    "combined_document",
    "deciders",
    "failed_suite",
    "find_record",
    "finish_night",
    "kept_records",
    "mde_max",
    "night_folder",
    "night_lines",
    "night_message",
    "night_metrics",
    "night_page",
    "night_usage",
    "night_verdict",
    "notify_night",
    "read_record",
    "record_document",
    "server_reachable",
    "subject_line",
    "suite_night",
    "suite_usage",
    "sum_usage",
    "team_lines",
    "team_night",
    "union_notifiers",
    "what_moved",
    "write_night_page",
    "write_record",
]
