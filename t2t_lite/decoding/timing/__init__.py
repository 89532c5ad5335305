"""When each word was said: CTC forced alignment, word times, subtitles."""
