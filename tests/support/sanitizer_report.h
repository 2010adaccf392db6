// Finds AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer reports in a
// process's output, so a test can fail on a server that crashed or leaked.
#pragma once

#include <string>
#include <string_view>

namespace gpurent::testing {

// The first sanitizer report in `output`, from its first line to the SUMMARY line, the
// next JSON log line, or a bounded number of lines; empty when there is no report. Only lines
// the runtimes write are recognised, at the start of a line: `==PID==ERROR: …Sanitizer`,
// `SUMMARY: …Sanitizer` and `path:line:col: runtime error: …`. A JSON log line that merely
// quotes such words (a hostile request target, say) starts with `{` and is not a report.
std::string find_sanitizer_report(std::string_view output);

}  // namespace gpurent::testing
