"""From a recording to the search: silence, length limits, long recordings split at pauses."""
