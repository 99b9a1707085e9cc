#pragma once
// What a token dataset holds, for `gridtrain inspect FILE.h5` (files whose gridtrain_kind is "dataset").
#include <ostream>
#include <string>

namespace gt {

// Validates the file like a reader would (gt::Error "<file>: <problem>") and prints its attributes, the size
// of each split, the sources with their checksums, and the first tokens of the train split.
void inspect_dataset(const std::string& path, std::ostream& os);

}  // namespace gt
