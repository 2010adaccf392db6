-- expect: type-change
ALTER TABLE nodes ALTER hostname SET DATA TYPE varchar(100);
