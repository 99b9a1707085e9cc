#include "src/train/families/model_families.hpp"

#include "src/train/families/gpt_family.hpp"
#include "src/train/families/resnet_family.hpp"

namespace gt {

std::unique_ptr<ModelFamily> make_model_family(const ModelConfig& m) {
  switch (m.model_kind()) {  // throws naming model.kind for a name outside the table
    case ModelKind::ResNet: return std::make_unique<ResNetFamily>(m);
    case ModelKind::GPT: break;
  }
  return std::make_unique<GptFamily>(m);
}

}  // namespace gt
