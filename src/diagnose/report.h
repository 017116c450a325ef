// Rendering an evaluation for people (text, markdown) and programs (JSON). The JSON form is a
// stable contract: one array of objects with at least rule, severity, run, series, state,
// onset_step, first_step, last_step, message, evidence (docs/diagnosis.md).
#pragma once

#include <string>

#include "diagnose/engine.h"
#include "store/db.h"

namespace tw::diagnose {

enum class ReportFormat { kText, kJson, kMarkdown };
bool ParseReportFormat(const std::string& s, ReportFormat* out);

// `db` is the engine's connection (sparklines are drawn from the store).
std::string RenderReport(const Evaluation& ev, store::Db& db, ReportFormat format);

}  // namespace tw::diagnose
