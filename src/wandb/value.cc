#include "wandb/value.h"

#include <vector>

namespace tw::wandb {

namespace {

bool Numbers(const JsonNode* n, std::vector<double>* out) {
  if (!n || n->type != JsonNode::Type::kArray) return false;
  out->clear();
  for (const auto& e : n->array) {
    if (e.type != JsonNode::Type::kNumber) return false;
    out->push_back(e.number);
  }
  return true;
}

}  // namespace

ValueKind ClassifyValue(const JsonNode& n) {
  switch (n.type) {
    case JsonNode::Type::kNumber:
    case JsonNode::Type::kBool: return ValueKind::kNumber;
    case JsonNode::Type::kString: return ValueKind::kString;
    case JsonNode::Type::kNull: return ValueKind::kNull;
    case JsonNode::Type::kArray: return ValueKind::kOther;
    case JsonNode::Type::kObject: break;
  }
  const JsonNode* type = n.Find("_type");
  if (!type || type->type != JsonNode::Type::kString) return ValueKind::kOther;
  if (type->text == "histogram") return ValueKind::kHistogram;
  if (type->text == "image-file" || type->text == "images/separated" || type->text == "images")
    return ValueKind::kImage;
  return ValueKind::kMedia;
}

Status ParseHistogram(const JsonNode& n, decode::Histogram* out) {
  std::vector<double> values, bins;
  if (!Numbers(n.Find("values"), &values)) return Corrupt("histogram without a numeric 'values' array");
  if (const JsonNode* packed = n.Find("packedBins"); packed && packed->type == JsonNode::Type::kObject) {
    const JsonNode* lo = packed->Find("min");
    const JsonNode* size = packed->Find("size");
    if (!lo || !size || lo->type != JsonNode::Type::kNumber || size->type != JsonNode::Type::kNumber)
      return Corrupt("histogram packedBins without numeric 'min' and 'size'");
    for (size_t i = 0; i <= values.size(); ++i) bins.push_back(lo->number + size->number * static_cast<double>(i));
  } else if (!Numbers(n.Find("bins"), &bins)) {
    return Corrupt("histogram without 'bins' or 'packedBins'");
  }
  if (bins.size() != values.size() + 1)
    return Corrupt("histogram has " + std::to_string(values.size()) + " values but " +
                   std::to_string(bins.size()) + " bin edges (want one more edge than values)");
  *out = decode::Histogram{};
  double sum = 0;
  bool any = false;
  for (size_t i = 0; i < values.size(); ++i) {
    const double c = values[i];
    out->count += c;
    sum += c * 0.5 * (bins[i] + bins[i + 1]);  // W&B keeps no sum: the bins' midpoints stand in
    if (c == 0) continue;
    if (!any) out->min = bins[i];
    out->max = bins[i + 1];
    any = true;
    out->buckets.push_back({bins[i], bins[i + 1], c});
  }
  out->sum = sum;
  return Status::Ok();
}

}  // namespace tw::wandb
