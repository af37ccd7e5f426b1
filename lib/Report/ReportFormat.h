// The number and JSON formatting the report tables share. Private to
// lib/Report.
#pragma once

#include "ein/Report/Report.h"

#include <optional>
#include <string>

namespace ein::report {

/// --bandwidth, else the device's.
double bandwidthOf(const ReportOptions &options);
/// "0.0561 ns", "3.2 ms".
std::string formatSeconds(double s);
/// Three significant digits.
std::string formatRatio(double v);
std::string jsonString(const std::string &s);
/// The number, or null when unbound.
std::string jsonNumber(const std::optional<Int> &v);
std::string jsonDouble(double v);

/// A sharded function's collectives (CollectivesReport.cpp): the table's
/// section, one row each and the communication beside `computeSeconds`
/// (the roofline of the ops, when known), and the JSON fields.
void appendCollectives(std::string &os, const CheckedModule &module,
                       const CheckedFunction &fn, const ReportOptions &options,
                       std::optional<double> computeSeconds);
void appendCollectivesJSON(std::string &os, const CheckedModule &module,
                           const CheckedFunction &fn,
                           const ReportOptions &options,
                           std::optional<double> computeSeconds);

} // namespace ein::report
