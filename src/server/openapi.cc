#include "server/openapi.h"

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

namespace loam::server {

extern const unsigned char kOpenApiYaml[];  // openapi_yaml.cc, from docs/openapi.yaml

namespace {

nlohmann::json Scalar(const YAML::Node& n) {
  const std::string& v = n.Scalar();
  if (n.Tag() == "!") return v;  // quoted: a string whatever it reads as
  if (v == "true") return true;
  if (v == "false") return false;
  if (v == "null" || v == "~") return nullptr;
  if (!v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-')) {
    nlohmann::json number = nlohmann::json::parse(v, nullptr, /*allow_exceptions=*/false);
    if (number.is_number()) return number;
  }
  return v;
}

nlohmann::json Convert(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& kv : n) j[kv.first.Scalar()] = Convert(kv.second);
      return j;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& e : n) j.push_back(Convert(e));
      return j;
    }
    case YAML::NodeType::Scalar:
      return Scalar(n);
    default:
      return nullptr;
  }
}

}  // namespace

const std::string& OpenApiYaml() {
  static const std::string kText(reinterpret_cast<const char*>(kOpenApiYaml));
  return kText;
}

Result<std::string> YamlToJson(const std::string& yaml) {
  try {
    return Convert(YAML::Load(yaml)).dump();
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("not YAML: ") + e.what());
  }
}

Result<std::string> OpenApiJson() { return YamlToJson(OpenApiYaml()); }

}  // namespace loam::server
