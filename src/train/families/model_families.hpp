#pragma once
// The one place that turns model.kind into a model family (src/model/model_family.hpp).
#include <memory>

#include "src/model/model_family.hpp"

namespace gt {

std::unique_ptr<ModelFamily> make_model_family(const ModelConfig& m);

}  // namespace gt
