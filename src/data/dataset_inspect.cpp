#include "src/data/dataset_inspect.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "src/data/dataset_file.hpp"

namespace gt {

void inspect_dataset(const std::string& path, std::ostream& os) {
  DatasetFile f(path);
  const DatasetInfo& d = f.info();
  char line[512];
  os << "dataset " << path << "\n";
  std::snprintf(line, sizeof line, "  format_version %lld, tokenizer %s, vocab_size %lld, eot_id %lld, tokens stored as uint%d\n",
                (long long)d.format_version, d.tokenizer.c_str(), (long long)d.vocab_size, (long long)d.eot_id,
                8 * d.token_bytes);
  os << line;
  for (Split s : {Split::Train, Split::Val}) {
    const int k = s == Split::Train ? 0 : 1;
    std::snprintf(line, sizeof line, "  %-5s %14lld tokens %10lld documents\n", k == 0 ? "train" : "val",
                  (long long)d.tokens[k], (long long)d.documents[k]);
    os << line;
  }
  int64_t total = 0;
  for (int64_t b : d.source_bytes) total += b;
  std::snprintf(line, sizeof line, "  sources: %zu files, %lld bytes, corpus fnv1a64 %016llx\n", d.source_files.size(),
                (long long)total, (unsigned long long)d.corpus_fnv1a64);
  os << line;
  const size_t show = std::min<size_t>(d.source_files.size(), 20);
  for (size_t i = 0; i < show; ++i) {
    std::snprintf(line, sizeof line, "    %-5s %12lld bytes  fnv1a64 %016llx  %s\n",
                  i < d.source_split.size() && d.source_split[i] == 1 ? "val" : "train",
                  (long long)(i < d.source_bytes.size() ? d.source_bytes[i] : -1),
                  (unsigned long long)(i < d.source_fnv1a64.size() ? d.source_fnv1a64[i] : 0), d.source_files[i].c_str());
    os << line;
  }
  if (show < d.source_files.size()) os << "    ... " << d.source_files.size() - show << " more\n";
  const int64_t n = std::min<int64_t>(f.tokens(Split::Train), 16);
  std::vector<int32_t> head(size_t(n > 0 ? n : 1));
  f.read_tokens(Split::Train, 0, n, head.data());
  os << "  first train tokens:";
  for (int64_t i = 0; i < n; ++i) os << ' ' << head[size_t(i)];
  os << "\n";
}

}  // namespace gt
