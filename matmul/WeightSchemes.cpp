//===- WeightSchemes.cpp - The weight schemes lowbit's matmul shows -------===//

#include "matmul/WeightSchemes.h"

namespace lowbit::matmul {

const std::vector<WeightSchemeEntry> &weightSchemeEntries() {
  static const std::vector<WeightSchemeEntry> entries = {
      {"int4_g128 asym", "int4_g128"},
      {"int4_g128 sym",
       "scheme(format=int4,scale=group(128;axis=1),tail=true,type=f16,"
       "rule=absmax,packing=nibble)"},
      {"int8 per channel", "scheme(format=int8,scale=per_channel(axis=0))"},
      {"int8_g64", "int8_g64"},
      {"fp8_e4m3 per tensor", "fp8_e4m3"},
      {"fp8_e4m3 per channel", "scheme(format=e4m3,scale=per_token)"},
      {"mxfp8", "mxfp8"},
      {"mxfp6_e2m3", "mxfp6_e2m3"},
      {"mxfp6_e3m2", "mxfp6_e3m2"},
      {"mxfp4", "mxfp4"},
      {"nvfp4 decode", "nvfp4"},
      {"nvfp4 encode",
       "scheme(format=e2m1,scale=group(16;axis=1),tail=true,type=ue4m3,"
       "rule=absmax,global=encode,packing=nibble)"},
      {"user e3m2 g48 bf16",
       "scheme(format=e3m2,scale=group(48;axis=1),tail=true,type=bf16,"
       "rule=absmax)"},
  };
  return entries;
}

const std::vector<ActivationPairEntry> &activationPairEntries() {
  static const std::vector<ActivationPairEntry> entries = {
      {"fp8 per tensor", "fp8_e4m3", "fp8_e4m3"},
      {"fp8 per token x per channel", "scheme(format=e4m3,scale=per_token)",
       "scheme(format=e4m3,scale=per_token)"},
      {"fp8 1x128 x 128x128",
       "scheme(format=e4m3,scale=block(128x128),tail=true)",
       "scheme(format=e4m3,scale=group(128;axis=1),tail=true)"},
      {"int8 per token x per channel", "scheme(format=int8,scale=per_token)",
       "scheme(format=int8,scale=per_token)"},
      {"nvfp4 x nvfp4", "nvfp4", "nvfp4"},
      {"mxfp4 x mxfp4", "mxfp4", "mxfp4"},
  };
  return entries;
}

} // namespace lowbit::matmul
