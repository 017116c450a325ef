// The top-level `key: value` lines of a YAML file whose values are scalars: Lightning's
// hparams.yaml, MLflow's meta.yaml. Not a YAML parser: nested values (an indented block, a
// flow collection), comments, documents markers and anchors are left out, and a key's value is
// read as YAML 1.1's plain scalars read (numbers, true/false, null/~, quoted strings, else the
// text). Each value comes back as JSON text.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tw::decode {

std::vector<std::pair<std::string, std::string>> ParseFlatYaml(std::string_view text);

}  // namespace tw::decode
